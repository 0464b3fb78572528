--[[
  dlqctl edit: the failed job's data as edited, set only while the job is still failed with
  the data that was opened, and only if it is retried. This part checks and writes nothing;
  then the batched retry (dlqctl's batched reprocessJob, below) runs as a function for that
  one job, and its data is set after it retried it (the retry does not read or write `data`,
  and a call the retry refuses changes nothing). ARGV as the batched script's, with one job
  id (ARGV[7]), then two more, taken off here:
    ARGV[8] the job's data as it was read
    ARGV[9] its data as edited
  Output: {-3} (nothing changed) when the job is no longer failed or its data changed
  meanwhile; else what the batched script answers.
]]
local editedData = table.remove(ARGV)
local openedData = table.remove(ARGV)
local editedKey = ARGV[1] .. ARGV[7]
if #ARGV ~= 7 or not redis.call("ZSCORE", KEYS[2], ARGV[7])
    or redis.call("HGET", editedKey, "data") ~= openedData then
  return {-3}
end
