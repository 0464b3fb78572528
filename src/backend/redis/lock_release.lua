--[[
  dlqctl: release the lock of a Redis job set (KEYS[1]) only while it is still this run's
  (ARGV[1], the token it was taken with): another run's lock is never deleted.
  Output: 1 released, 0 not this run's any more.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
