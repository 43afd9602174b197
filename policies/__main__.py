"""The gpustack guardrails as a CrossGuard policy pack: `pulumi preview --policy-pack policies`.

The rules live in the gpustack package (gpustack.guardrails), so this pack and `gpustack check` judge
alike; this file only serves them to the Pulumi engine.
"""

from gpustack.guardrails.policy_pack import main

main()
