--[[
  dlqctl's batched form of BullMQ 6.7.6's reprocessJob-9.lua: what job.retry('failed') does,
  for each of up to N jobs in one call, job by job, with reprocessJob's checks and effects.
  Input:
    KEYS[1] events stream
    KEYS[2] job state (the failed set)
    KEYS[3] wait key
    KEYS[4] meta
    KEYS[5] active key
    KEYS[6] marker key
    KEYS[7] prioritized key
    KEYS[8] priority counter key
    ARGV[1] key prefix (bull:NAME:): a job's key is the prefix and its id
    ARGV[2] propVal - failedReason/returnvalue
    ARGV[3] prev state - failed/completed
    ARGV[4] reset attemptsMade - "1" or "0"
    ARGV[5] reset attemptsStarted - "1" or "0"
    ARGV[6] count the redrive on the job's hash (dlqctl-redrive-count) - "1" or "0"
    ARGV[7..] job ids
  Output: one code per job id, in order, as reprocessJob returns it:
     1 means the job was retried
    -1 means the job does not exist
    -3 means the job was not found in the expected set
  and two of dlqctl's, where reprocessJob would stop with an error halfway (left failed):
    -4 means the job's key holds another type than a hash
    -5 means a key of the job's parent holds another type than BullMQ gives it.
  A queue key of another type than BullMQ gives it: an error, and nothing changed.
]]
local rcall = redis.call;
local function addBaseMarkerIfNeeded(markerKey, isPausedOrMaxed)
  if not isPausedOrMaxed then
    rcall("ZADD", markerKey, 0, "0")
  end  
end
local function getPriorityScore(priority, priorityCounterKey)
  local prioCounter = rcall("INCR", priorityCounterKey)
  return priority * 0x100000000 + prioCounter % 0x100000000
end
local function getOrSetMaxEvents(metaKey)
  local maxEvents = rcall("HGET", metaKey, "opts.maxLenEvents")
  if not maxEvents then
    maxEvents = 10000
    rcall("HSET", metaKey, "opts.maxLenEvents", maxEvents)
  end
  return maxEvents
end
local function isQueuePausedOrMaxed(queueMetaKey, activeKey)
  local queueAttributes = rcall("HMGET", queueMetaKey, "paused", "concurrency")
  if queueAttributes[1] then
    return true
  else
    if queueAttributes[2] then
      local activeCount = rcall("LLEN", activeKey)
      return activeCount >= tonumber(queueAttributes[2])
    end
  end
  return false
end
-- moveChildBackToParentDependencies, given the job's parentKey (read with its other fields).
local function moveChildBackToParentDependencies(jobKey, parentKey, prevState)
  if parentKey and rcall("EXISTS", parentKey) == 1 then
    if prevState == "failed" then
      if rcall("ZREM", parentKey .. ":unsuccessful", jobKey) == 1 or
        rcall("HDEL", parentKey .. ":failed", jobKey) == 1 then
        rcall("SADD", parentKey .. ":dependencies", jobKey)
      end
    else
      if rcall("HDEL", parentKey .. ":processed", jobKey) == 1 then
        rcall("SADD", parentKey .. ":dependencies", jobKey)
      end
    end
  end
end
-- (job.opts.lifo ? 'R' : 'L') + 'PUSH', as job.retry() decides it from the job's opts (a
-- JavaScript truthy value); the JSON is decoded only where it can name lifo.
local function isLifo(opts)
  if opts and (string.find(opts, "lifo", 1, true) or string.find(opts, "\\", 1, true)) then
    local ok, o = pcall(cjson.decode, opts)
    if ok and type(o) == "table" then
      local v = o["lifo"]
      return v ~= nil and v ~= false and v ~= 0 and v ~= "" and v ~= cjson.null
    end
  end
  return false
end
-- Redis keeps what a script wrote before an error stopped it: a job taken out of failed whose
-- push then failed would be in no state at all. So whatever a write could fail on is checked
-- before the first write: the queue's keys here (one of another type refuses the whole call,
-- nothing changed), each job's hash and its parent's keys before that job is touched.
local function wrongType(key, want)
  local t = rcall("TYPE", key)["ok"]
  if t ~= "none" and t ~= want then
    return t
  end
end
local function refuse(key, what)
  return redis.error_reply("dlqctl: " .. key .. " holds " .. what ..
    ", not what BullMQ keeps there; nothing was changed")
end
for k, want in ipairs({"stream", "zset", "list", "hash", "list", "zset", "zset", "string"}) do
  local t = wrongType(KEYS[k], want)
  if t then
    return refuse(KEYS[k], "a " .. t)
  end
end
local counter = rcall("GET", KEYS[8])
if counter and not string.match(counter, "^%-?%d+$") then
  return refuse(KEYS[8], "`" .. counter .. "`")
end
local maxLen = rcall("HGET", KEYS[4], "opts.maxLenEvents")
if maxLen and not string.match(maxLen, "^%d+$") then
  return refuse(KEYS[4], "opts.maxLenEvents `" .. maxLen .. "`")
end
local function parentKeysFit(parentKey)
  return not (wrongType(parentKey .. ":unsuccessful", "zset") or
    wrongType(parentKey .. ":failed", "hash") or wrongType(parentKey .. ":processed", "hash") or
    wrongType(parentKey .. ":dependencies", "set"))
end
local prefix = ARGV[1]
local propVal = ARGV[2]
local prevState = ARGV[3]
local attributesToRemove = {}
if ARGV[4] == "1" then
  table.insert(attributesToRemove, "atm")
end
if ARGV[5] == "1" then
  table.insert(attributesToRemove, "ats")
end
-- Neither changes while the script runs (it writes neither meta's paused/concurrency nor
-- the active list): read once.
local isPausedOrMaxed = isQueuePausedOrMaxed(KEYS[4], KEYS[5])
local maxEvents = false
local lpush, rpush = {}, {}
local added = false
local codes = {}
for i = 7, #ARGV do
  local jobId = ARGV[i]
  local jobKey = prefix .. jobId
  -- The fields reprocessJob reads after its HDEL (which touches none of them), read first,
  -- with "timestamp", which every job's hash has: then they also answer reprocessJob's EXISTS
  -- (any field present: the job exists; none of them: EXISTS decides, for a hash written by
  -- hand). One command a job fewer, the same effects. With the loop guard's count, read here
  -- and written whole below (a count that is not an integer starts again at 1).
  local fields = redis.pcall("HMGET", jobKey, "priority", "opts", "parentKey", "timestamp",
    "dlqctl-redrive-count")
  if fields["err"] then
    codes[#codes + 1] = -4
  elseif fields[1] or fields[2] or fields[3] or fields[4] or rcall("EXISTS", jobKey) == 1 then
    if fields[3] and not parentKeysFit(fields[3]) then
      codes[#codes + 1] = -5
    elseif (rcall("ZREM", KEYS[2], jobId) == 1) then
      rcall("HDEL", jobKey, "finishedOn", "processedOn", propVal, unpack(attributesToRemove))
      local priority = tonumber(fields[1]) or 0
      if priority ~= priority then
        -- NaN (Lua reads "nan" as a number), which ZADD refuses: as no priority.
        priority = 0
      end
      -- Standard or priority add (the list pushes of the whole batch are made below, in
      -- order, each end on its own: the same list as one push per job)
      if priority == 0 then
        if isLifo(fields[2]) then
          rpush[#rpush + 1] = jobId
        else
          lpush[#lpush + 1] = jobId
        end
      else
        local score = getPriorityScore(priority, KEYS[8])
        rcall("ZADD", KEYS[7], score, jobId)
      end
      added = true
      moveChildBackToParentDependencies(jobKey, fields[3], prevState)
      if not maxEvents then
        maxEvents = getOrSetMaxEvents(KEYS[4])
      end
      -- Emit waiting event
      rcall("XADD", KEYS[1], "MAXLEN", "~", maxEvents, "*", "event", "waiting",
        "jobId", jobId, "prev", prevState);
      if ARGV[6] == "1" then
        local n = fields[5] and string.match(fields[5], "^%d+$") and tonumber(fields[5]) or 0
        rcall("HSET", jobKey, "dlqctl-redrive-count", string.format("%d", n + 1))
      end
      codes[#codes + 1] = 1
    else
      codes[#codes + 1] = -3
    end
  else
    codes[#codes + 1] = -1
  end
end
-- Lists of at most 1,000 ids per push (unpack's limit is far above: --batch-size is at most
-- 10,000; kept small for the server's argument buffers).
local function push(cmd, ids)
  for from = 1, #ids, 1000 do
    rcall(cmd, KEYS[3], unpack(ids, from, math.min(from + 999, #ids)))
  end
end
push("LPUSH", lpush)
push("RPUSH", rpush)
if added then
  addBaseMarkerIfNeeded(KEYS[6], isPausedOrMaxed)
end
return codes
