-- dlqctl: Sidekiq's "Retry now" (SortedEntry#retry, then Client.push) in one atomic step.
-- KEYS[1]: the sorted set read (NS:dead or NS:retry); KEYS[2]: NS:queues
-- ARGV[1]: the key prefix ('' or 'NS:'); then, per job, three values: the member exactly as
-- read, its queue, and the job to push (retry_count one less, enqueued_at now).
-- Returns, per job, 1 (retried) or 0 (no longer in the set: retried or removed meanwhile,
-- by Sidekiq or another operator; nothing pushed).
local done = {}
for i = 2, #ARGV, 3 do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('SADD', KEYS[2], ARGV[i + 1])
    redis.call('LPUSH', ARGV[1] .. 'queue:' .. ARGV[i + 1], ARGV[i + 2])
    done[#done + 1] = 1
  else
    done[#done + 1] = 0
  end
end
return done
