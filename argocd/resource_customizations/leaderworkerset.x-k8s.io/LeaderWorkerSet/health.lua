-- Argo CD health of a LeaderWorkerSet (kubectl-disagg, docs/argocd.md).
-- Lua 5.1 with only the base, table and package libraries: no string.*, no math.*.
-- Progressing until every group is updated and ready and the controller has seen the
-- latest spec (lenient when status.observedGeneration is absent: LWS before v0.9);
-- Healthy at 0 groups when the spec asks for 0; Degraded on a failed condition.
local hs = {}

local failure_types = { Failed = true, Degraded = true, ReplicaFailure = true }

local function failed_condition(status)
  if status == nil or status.conditions == nil then
    return nil
  end
  for _, condition in ipairs(status.conditions) do
    if condition.status == "True" and failure_types[condition.type] then
      return condition
    end
    if condition.type == "Progressing" and condition.status == "False"
        and condition.reason == "ProgressDeadlineExceeded" then
      return condition
    end
  end
  return nil
end

local desired = 1
if obj.spec ~= nil and obj.spec.replicas ~= nil then
  desired = obj.spec.replicas
end
local status = obj.status

local failed = failed_condition(status)
if failed ~= nil then
  hs.status = "Degraded"
  hs.message = failed.type .. ": " .. (failed.message or failed.reason or "")
  return hs
end

if status == nil then
  if desired == 0 then
    hs.status = "Healthy"
    hs.message = "Scaled to 0 groups"
  else
    hs.status = "Progressing"
    hs.message = "Waiting for the LeaderWorkerSet controller to report status"
  end
  return hs
end

local generation = obj.metadata and obj.metadata.generation
if status.observedGeneration ~= nil and generation ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the LeaderWorkerSet controller to observe generation " .. generation
  return hs
end

local replicas = status.replicas or 0
local ready = status.readyReplicas or 0
local updated = status.updatedReplicas or 0

if updated < desired then
  hs.status = "Progressing"
  hs.message = "Rolling out: " .. updated .. " of " .. desired .. " groups updated"
elseif replicas > desired then
  hs.status = "Progressing"
  hs.message = "Scaling down: " .. replicas .. " groups, " .. desired .. " requested"
elseif ready < desired then
  hs.status = "Progressing"
  hs.message = "Waiting for groups to be ready: " .. ready .. " of " .. desired .. " ready"
elseif desired == 0 then
  hs.status = "Healthy"
  hs.message = "Scaled to 0 groups"
else
  hs.status = "Healthy"
  hs.message = "All " .. desired .. " groups ready and updated"
end
return hs
