"""`gpustack report`: what ran, read from Prometheus, against what the plan assumed.

A stage after the plan: it reads the spec and its plan, asks Prometheus (or recorded answers) for the
series kube-state-metrics, the DCGM exporter and HAMi export, measures per workload and pool, and prices
every recommendation with the planner itself (the spec with that one change, planned, subtracted).
Nothing else imports it but its command.
"""
