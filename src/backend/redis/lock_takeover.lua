--[[
  dlqctl: take over the lock of a Redis job set (KEYS[1]) from a run that is gone (a process
  on this host that no longer runs), only while the lock still holds that run's token
  (ARGV[1]): ARGV[2] the new token, ARGV[3] its time to live in milliseconds.
  Output: 1 taken, 0 the lock changed meanwhile (renewed, released or taken by another).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
