"""Per-cloud Pulumi backends: one module per cloud, named by the cloud's registry entry.

Each module exposes `declare(target: TargetPlan, plan: Plan) -> dict[str, GpuNodePool]`, which
declares one `GpuNodePool` component per pool of the target (children parented to it) plus any
target-wide resources, and returns the components by pool name. Backends only render the plan:
every decision (instance type, capacity, sharing, names) was made by the planner, and every enum
value was checked by the cloud module (`Cloud.check_pool`) before anything is declared.
"""
