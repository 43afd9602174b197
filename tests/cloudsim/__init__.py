"""A behavioural model of the clouds, for tests: what the Cluster Autoscaler of each cloud believes a
node group at zero offers, what the nodes then really advertise, whether the autoscaler counts them as
unready GPU nodes, and whether an upgrade of a reserved floor stays inside its reservation.

Inputs are what the program declares (resources with their wire-format inputs, as `gpustack.testing`
records them or a golden file keeps them) and what `gpustack render` writes for the cluster; never the
plan, so the plan can be checked against it. Every rule names the autoscaler source it follows:
kubernetes/autoscaler at tag cluster-autoscaler-1.36.1 (commit 35e8a280425c76a4040f57ae0fa232a952c02024),
paths under cluster-autoscaler/, and the cloud's documentation.
"""
