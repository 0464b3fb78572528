-- dlqctl: Sidekiq's "Retry now" (SortedEntry#retry, then Client.push) in one atomic step.
-- KEYS[1]: the sorted set read (NS:dead or NS:retry); KEYS[2]: NS:queues
-- ARGV[1]: the key prefix ('' or 'NS:'); then, per job, three values: the member exactly as
-- read, its queue, and the job to push (retry_count one less, enqueued_at now).
-- Returns, per job, 1 (retried), 0 (no longer in the set: retried or removed meanwhile,
-- by Sidekiq or another operator; nothing pushed) or -1 (its queue's key holds another type
-- than a list: left in the set).
-- Redis keeps what a script wrote before an error stopped it, so every key a write could fail
-- on is checked first: the two sets before anything (another type: the call is refused and
-- nothing changed), each queue's list before its first job leaves the set.
local function wrongType(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return t
  end
end
for k, want in ipairs({'zset', 'set'}) do
  local t = wrongType(KEYS[k], want)
  if t then
    return redis.error_reply('dlqctl: ' .. KEYS[k] .. ' holds a ' .. t .. ', not the ' .. want ..
      ' Sidekiq keeps there; nothing was changed')
  end
end
local listFits = {}
local done = {}
for i = 2, #ARGV, 3 do
  local list = ARGV[1] .. 'queue:' .. ARGV[i + 1]
  if listFits[list] == nil then
    listFits[list] = not wrongType(list, 'list')
  end
  if not listFits[list] then
    done[#done + 1] = -1
  elseif redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('SADD', KEYS[2], ARGV[i + 1])
    redis.call('LPUSH', list, ARGV[i + 2])
    done[#done + 1] = 1
  else
    done[#done + 1] = 0
  end
end
return done
