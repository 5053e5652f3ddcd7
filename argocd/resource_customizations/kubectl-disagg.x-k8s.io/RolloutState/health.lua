-- Argo CD health of a git-driven rollout's position: the RolloutState that `kubectl disagg cmp
-- generate` emits beside a set's LeaderWorkerSets (docs/gitops.md). Lua 5.1 with only the base,
-- table and package libraries: no string.*, no math.*.
-- Healthy at rest (every slice runs one revision); Suspended mid-rollout, waiting for the next
-- reviewed commit, with the plugin's own summary (`rollout.message`); Degraded for a state the
-- plugin would refuse: a slice naming a revision without a record, a count that is not a whole
-- number of 0 or more, a revision group with some roles at 0 and others running.
-- With a RolloutPolicy (design §9) the summary's phase says more: AtGate (held after a wave) and
-- Paused are Suspended, with the command that passes them; Aborted is Degraded, and so is a
-- pause a failed analysis made (the check and its values in the message). The object
-- `rollout step` keeps in the cluster (a position, no slices of its own) is Progressing while
-- a step moves it on.
local hs = {}

local function degraded(message)
  hs.status = "Degraded"
  hs.message = message
  return hs
end

local function is_count(n)
  return type(n) == "number" and n >= 0 and n % 1 == 0
end

local records = {}
for _, record in ipairs(obj.revisions or {}) do
  if type(record.revision) ~= "string" then
    return degraded("revisions: a record without a revision")
  end
  records[record.revision] = record
end

local rolling = false
for _, slice in ipairs(obj.slices or {}) do
  local where = "slice " .. tostring(slice.slice)
  local deployed = slice.revisions or {}
  if #deployed > 1 then
    rolling = true
  end
  for _, entry in ipairs(deployed) do
    local record = records[entry.revision]
    if record == nil then
      return degraded(where .. ": revision " .. tostring(entry.revision) .. " has no record under revisions")
    end
    local zero, running = false, false
    for _, role in ipairs(record.roles or {}) do
      local n = (entry.replicas or {})[role.name]
      if not is_count(n) then
        return degraded(where .. " revision " .. entry.revision .. ": " .. tostring(role.name) ..
          " replicas must be a count (0 or more)")
      end
      if n == 0 then
        zero = true
      else
        running = true
      end
    end
    if zero and running then
      return degraded(where .. " revision " .. entry.revision ..
        " has some roles at 0 and others running: a revision group runs all its roles or none")
    end
  end
end

local rollout = obj.rollout or {}
local name = (obj.metadata and obj.metadata.name) or "rollout"
-- A pause an analysis called for (onFailure: pause) is a failure to look at, not a gate.
local paused = (obj.position or {}).paused
if rollout.phase == "Paused" and paused ~= nil and paused.by == "analysis" then
  return degraded(rollout.message or (name .. ": " .. tostring(paused.reason)))
end
if rollout.phase == "AtGate" or rollout.phase == "Paused" then
  hs.status = "Suspended"
  hs.message = rollout.message or (name .. ": held; rollout promote or rollout resume passes it")
  return hs
end
if rollout.phase == "Aborted" then
  return degraded(rollout.message or (name .. ": the rollout was aborted"))
end
if rollout.phase == "Rolling" and #(obj.slices or {}) == 0 and obj.position ~= nil then
  hs.status = "Progressing"
  hs.message = rollout.message or (name .. ": rolling; next: rollout step")
  return hs
end
if rollout.phase == "Rolling" or (rollout.phase == nil and rolling) then
  hs.status = "Suspended"
  hs.message = rollout.message or (name .. ": mid-rollout; next: rollout step --gitops")
  return hs
end
if rolling then
  return degraded(name .. ": the state runs several revisions but says it is at rest")
end
hs.status = "Healthy"
hs.message = rollout.message or (name .. ": at rest")
return hs
