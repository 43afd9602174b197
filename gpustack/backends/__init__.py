"""What the Pulumi backends share: the `GpuNodePool` component (`base.py`) and the in-cluster layer
(`kubernetes.py`). Each cloud's backend is the `backend` module of its bundle,
`gpustack/clouds/<cloud>/backend.py`, imported only by the Pulumi program.

Each backend follows the `Backend` Protocol of `base.py`: `declare(target, plan, context)` declares one
`GpuNodePool` component per pool of the target (children parented to it) plus any target-wide
resources, and returns the components by pool name. Backends only render the plan: every decision
(instance type, capacity, sharing, names) was made by the planner, and every enum value of a pool's
`compiled` value was checked by its provisioner (`Provisioner.check_pool`) when the spec was planned.
"""
