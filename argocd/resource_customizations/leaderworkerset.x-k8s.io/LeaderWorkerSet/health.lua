-- Argo CD health of a LeaderWorkerSet (kubectl-disagg, docs/argocd.md).
-- Runs in Argo CD's Lua VM without useOpenLibs: base, table and package only (no string.*,
-- no math.*, no os). Like Argo CD's StatefulSet check: Progressing until the controller has
-- reported status for the latest spec (status.observedGeneration, where the LWS writes it:
-- v0.9 on; before that, judged on the counts), whatever the replica count; then until every
-- group is updated and ready and no surplus group remains. A partitioned rollout
-- (rolloutStrategy.rollingUpdateConfiguration.partition) is complete, and Healthy, once
-- replicas - partition groups are updated, all are ready and the LWS is Available.
-- Degraded on a failed condition.
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

local function condition_true(status, type)
  for _, condition in ipairs(status.conditions or {}) do
    if condition.type == type then
      return condition.status == "True"
    end
  end
  return false
end

local spec = obj.spec or {}
local desired = 1
if spec.replicas ~= nil then
  desired = spec.replicas
end
local partition = 0
local strategy = spec.rolloutStrategy
if strategy ~= nil and strategy.rollingUpdateConfiguration ~= nil
    and strategy.rollingUpdateConfiguration.partition ~= nil then
  partition = strategy.rollingUpdateConfiguration.partition
end
local status = obj.status

local failed = failed_condition(status)
if failed ~= nil then
  hs.status = "Degraded"
  hs.message = failed.type .. ": " .. (failed.message or failed.reason or "")
  return hs
end

if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the LeaderWorkerSet controller to report status"
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
local to_update = desired - partition
if to_update < 0 then
  to_update = 0
end

if updated < to_update then
  hs.status = "Progressing"
  if partition > 0 then
    hs.message = "Partitioned rollout: " .. updated .. " of " .. to_update .. " groups updated (partition " .. partition .. ")"
  else
    hs.message = "Rolling out: " .. updated .. " of " .. desired .. " groups updated"
  end
elseif replicas > desired then
  hs.status = "Progressing"
  hs.message = "Scaling down: " .. replicas .. " groups, " .. desired .. " requested"
elseif ready < desired then
  hs.status = "Progressing"
  hs.message = "Waiting for groups to be ready: " .. ready .. " of " .. desired .. " ready"
elseif updated < desired then
  -- Only a partition holds groups back here: the rollout is as far as it was asked to go.
  if condition_true(status, "Available") then
    hs.status = "Healthy"
    hs.message = "Partitioned rollout complete: " .. updated .. " of " .. desired .. " groups updated (partition " .. partition .. ")"
  else
    hs.status = "Progressing"
    hs.message = "Partitioned rollout: waiting for the LeaderWorkerSet to be Available"
  end
elseif desired == 0 then
  hs.status = "Healthy"
  hs.message = "Scaled to 0 groups"
else
  hs.status = "Healthy"
  hs.message = "All " .. desired .. " groups ready and updated"
end
return hs
