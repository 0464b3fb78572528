--[[
  dlqctl: remove an id from BullMQ's failed set that has no job hash (a removal left it
  behind), only while it still has none, and only that member.
    KEYS[1] the job's key (PREFIX:QUEUE:ID)
    KEYS[2] the failed set
    ARGV[1] the id
  Output: 1 removed, 0 no longer in failed, -1 the job's key exists now (left as it is).
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -1
end
return redis.call('ZREM', KEYS[2], ARGV[1])
