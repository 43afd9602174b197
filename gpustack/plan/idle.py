"""Idle GPUs acted on, as planned: each workload's `idle`, who scales what, and what the target must run.

`settings.autostop` picks the controller of a target's scheduled and idle workloads:
- `cronjob` (default): the built-in CronJobs (gpustack/render/autostop.py), and for `idle.action:
  scale-to-zero` the built-in idle job reading `settings.prometheus_url`;
- `keda`: a KEDA ScaledObject per Deployment or StatefulSet workload with a closing window or an idle
  action (gpustack/render/keda.py); the CronJobs leave those workloads alone, so two controllers never
  fight over one replica count. Jobs are not ScaledObject targets and stay with the CronJobs.
"""

from __future__ import annotations

from gpustack.plan.model import IdlePolicy, Pool
from gpustack.spec.model import IDLE_KINDS, Spec, Target

_KEDA_NOTE = (
    "KEDA scales {names}: one ScaledObject each (keda.sh/v1alpha1, KEDA 2.12 or later for scalingModifiers); "
    "the built-in auto-stop CronJobs leave them alone. KEDA's triggers alone would not do what the plan says: "
    "a ScaledObject is active while any trigger is (pkg/scaling/scale_handler.go getScaledObjectState) and its "
    "HPA takes the largest metric, so a cron trigger would hold a workload up all window, idle or not. A "
    "formula (advanced.scalingModifiers) gives one composite metric instead: the plan's replica count inside "
    "the window while the workload's GPUs were busy within the idle period, or during the window's first idle "
    "period (its pods start), else 0; outside the window 0. Needs kube-state-metrics with "
    "--metric-labels-allowlist=pods=[gpustack.dev/workload] for idle triggers.")


def policies(spec: Spec, target: Target) -> tuple[IdlePolicy, ...]:
    found = []
    for name in target.workloads:
        workload = spec.workload(name)
        if workload.idle is not None:
            idle = workload.idle
            found.append(IdlePolicy(name, workload.namespace, idle.below_percent, idle.for_seconds, idle.action,
                                    idle.floors))
    return tuple(sorted(found, key=lambda p: (p.namespace, p.workload)))


def scaled_by_keda(spec: Spec, target: Target, pools: tuple[Pool, ...], idle: tuple[IdlePolicy, ...]
                   ) -> tuple[str, ...]:
    """The workloads KEDA scales on a `settings.autostop: keda` target: Deployments and StatefulSets with a
    window that closes, or an idle action, unless the workload's own `autostop` chooses its objects."""
    if target.setting("autostop", "cronjob") != "keda":
        return ()
    windowed = {w for p in pools if p.schedule is not None and p.schedule.start_crons for w in p.workloads}
    acting = {p.workload for p in idle if p.action == "scale-to-zero"}
    # A workload whose `autostop` names its kind of object stays with the built-in job, which stops any kind.
    return tuple(sorted(w for w in windowed | acting
                        if spec.workload(w).kind in IDLE_KINDS and spec.workload(w).autostop is None))


def notes(target: Target, keda: tuple[str, ...], idle: tuple[IdlePolicy, ...]) -> list[str]:
    found = []
    if keda:
        found.append(_KEDA_NOTE.format(names=", ".join(keda)))
    builtin = [p for p in idle if p.action == "scale-to-zero" and p.workload not in keda]
    for policy in builtin:
        found.append(f"The built-in idle job scales {policy.namespace}/{policy.workload} to zero after "
                     f"{policy.for_seconds // 60} minutes below {policy.below_percent:g}% GPU utilisation, read from "
                     f"{target.setting('prometheus_url')} (checked every 5 minutes), and saves its replica count "
                     "where auto-stop does: a window's start gives it back; without a window, scale it up again.")
    return found
