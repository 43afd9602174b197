"""gpustack: compile a GPU workload spec into right-sized, shared, spot and reserved node pools."""

__version__ = "0.1.0"
