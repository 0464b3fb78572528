--[[
  dlqctl: renew the lock of a Redis job set (KEYS[1], `<set>:dlqctl-lock`) while it is still
  this run's (ARGV[1], the token it was taken with), for ARGV[2] milliseconds more.
  Output: 1 renewed, 0 not this run's any more (expired, or another run's).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
