"""What the Pulumi backends share: the `GpuNodePool` component (`base.py`) and the in-cluster layer
(`kubernetes.py`). Each cloud's backend is the `backend` module of its bundle,
`gpustack/clouds/<cloud>/backend.py`, imported only by the Pulumi program.

Each backend exposes `declare(target: TargetPlan, plan: Plan) -> dict[str, GpuNodePool]`, which
declares one `GpuNodePool` component per pool of the target (children parented to it) plus any
target-wide resources, and returns the components by pool name. Backends only render the plan:
every decision (instance type, capacity, sharing, names) was made by the planner, and every enum
value was checked by the cloud module (`Cloud.check_pool`) before anything is declared.
"""
