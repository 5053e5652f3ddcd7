-- Argo CD health of a DisaggregatedSet stored in a cluster where its controller runs
-- (kubectl-disagg, docs/argocd.md). Runs in Argo CD's Lua VM without useOpenLibs: base,
-- table and package only (no string.*, no math.*, no os).
-- Degraded on a failed condition. Progressing while no controller has written status (never
-- Healthy by default: nothing would ever report otherwise), while status is for an older
-- generation (lenient without status.observedGeneration), and, per role in spec order, until
-- replicas, ready and updated groups all equal replicas x slices (External roles: the
-- replicas status reports). Then the controller's own conditions decide where it writes
-- them: it compares External roles with the autoscaler's target, which only it knows, so
-- Progressing=True or Available=False is Progressing with its reason, Available=True Healthy.
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

local function find_condition(status, type)
  for _, condition in ipairs(status.conditions or {}) do
    if condition.type == type then
      return condition
    end
  end
  return nil
end

local function described(condition)
  local text = condition.type .. "=" .. condition.status
  if condition.reason ~= nil then
    text = text .. " (" .. condition.reason .. ")"
  end
  if condition.message ~= nil and condition.message ~= "" then
    text = text .. ": " .. condition.message
  end
  return text
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

if status == nil or (status.observedGeneration == nil and status.conditions == nil and status.roleStatuses == nil) then
  hs.status = "Progressing"
  hs.message = "Waiting for the DisaggregatedSet controller to report status"
  return hs
end

local generation = obj.metadata and obj.metadata.generation
if status.observedGeneration ~= nil and generation ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the DisaggregatedSet controller to observe generation " .. generation
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

local by_name = {}
for _, role_status in ipairs(status.roleStatuses or {}) do
  by_name[role_status.name] = role_status
end

local all_zero = true
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
  if desired > 0 or desired_of(role) == nil then
    all_zero = false
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

local progressing = find_condition(status, "Progressing")
local available = find_condition(status, "Available")
if progressing ~= nil and progressing.status == "True" then
  hs.status = "Progressing"
  hs.message = described(progressing)
  return hs
end
if available ~= nil and available.status ~= "True" then
  hs.status = "Progressing"
  hs.message = described(available)
  return hs
end

hs.status = "Healthy"
if all_zero then
  hs.message = "Scaled to 0 groups"
else
  hs.message = "All roles ready: " .. table.concat(summary, ", ")
end
return hs
