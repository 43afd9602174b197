"""Pulumi's entry point for this project: `pulumi up` declares the selected stack's target."""

from gpustack.program import main

main()
