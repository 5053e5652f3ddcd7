-- Argo CD health of a DisaggregatedSet stored in a cluster whose controller reports status
-- (kubectl-disagg, docs/argocd.md). Lua 5.1 with only the base, table and package libraries:
-- no string.*, no math.*. Per role, in spec order: Progressing until replicas, ready and
-- updated groups all equal replicas x slices (External roles: whatever the autoscaler
-- asked, as status reports it) and the controller has seen the latest spec (lenient without
-- status.observedGeneration); Healthy when every role is there (also at 0);
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

local spec = obj.spec or {}
local roles = spec.roles or {}
local slices = spec.slices or 1
local status = obj.status

local failed = failed_condition(status)
if failed ~= nil then
  hs.status = "Degraded"
  hs.message = failed.type .. ": " .. (failed.message or failed.reason or "")
  return hs
end

local function desired_of(role)
  if role.scaling ~= nil and role.scaling.mode == "External" then
    return nil
  end
  local replicas = 1
  if role.spec ~= nil and role.spec.replicas ~= nil then
    replicas = role.spec.replicas
  end
  return replicas * slices
end

local all_zero = true
for _, role in ipairs(roles) do
  local desired = desired_of(role)
  if desired == nil or desired > 0 then
    all_zero = false
  end
end

if status == nil then
  if all_zero then
    hs.status = "Healthy"
    hs.message = "Scaled to 0 groups"
  else
    hs.status = "Progressing"
    hs.message = "Waiting for the DisaggregatedSet controller to report status"
  end
  return hs
end

local generation = obj.metadata and obj.metadata.generation
if status.observedGeneration ~= nil and generation ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the DisaggregatedSet controller to observe generation " .. generation
  return hs
end

local by_name = {}
for _, role_status in ipairs(status.roleStatuses or {}) do
  by_name[role_status.name] = role_status
end

local summary = {}
for _, role in ipairs(roles) do
  local role_status = by_name[role.name] or {}
  local replicas = role_status.replicas or 0
  local ready = role_status.readyReplicas or 0
  local updated = role_status.updatedReplicas or 0
  local desired = desired_of(role)
  if desired == nil then
    desired = replicas
  end
  if updated < desired then
    hs.status = "Progressing"
    hs.message = "Rolling out role " .. role.name .. ": " .. updated .. " of " .. desired .. " groups updated"
    return hs
  end
  if replicas > desired then
    hs.status = "Progressing"
    hs.message = "Scaling down role " .. role.name .. ": " .. replicas .. " groups, " .. desired .. " requested"
    return hs
  end
  if ready < desired then
    hs.status = "Progressing"
    hs.message = "Waiting for role " .. role.name .. ": " .. ready .. " of " .. desired .. " groups ready"
    return hs
  end
  table.insert(summary, role.name .. " " .. ready .. "/" .. desired)
end

hs.status = "Healthy"
if all_zero then
  hs.message = "Scaled to 0 groups"
else
  hs.message = "All roles ready: " .. table.concat(summary, ", ")
end
return hs
