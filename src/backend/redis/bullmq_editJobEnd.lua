-- dlqctl edit, after the batched retry (run above as bullmq_retry): the edited data is set
-- once the retry answered 1 (the job's key is a hash: the checks read its `data`).
local codes = bullmq_retry()
if codes[1] == 1 then
  redis.call("HSET", editedKey, "data", editedData)
end
return codes
