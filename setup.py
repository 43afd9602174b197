"""Packaging beyond pyproject.toml: the top-level templates/ folder ships as `gpustack_templates`."""

from setuptools import find_namespace_packages, setup

TEMPLATE_DIRS = find_namespace_packages(where="templates")

setup(
    packages=(find_namespace_packages(include=["gpustack", "gpustack.*"])
              + ["gpustack_templates"] + [f"gpustack_templates.{d}" for d in TEMPLATE_DIRS]),
    package_dir={"gpustack_templates": "templates"},
    package_data={"gpustack.catalog.data": ["*"], "gpustack_templates": ["*"],
                  **{f"gpustack_templates.{d}": ["*"] for d in TEMPLATE_DIRS}},
)
