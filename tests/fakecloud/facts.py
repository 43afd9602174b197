"""FKS: what shared code asks a cloud, as data. A real cloud puts the source URL of each fact next to it;
this one is made up, so its facts cite the test that relies on them."""

from __future__ import annotations

from gpustack.clouds.base import Cloud, ExampleTarget, NameRule, Setting

SOURCE = "https://fks.invalid/docs/node-pools"  # the made-up cloud's made-up documentation


class FKS(Cloud):
    name = "fakecloud"
    aliases = ("fks",)
    display_name = "FKS"
    example = ExampleTarget(region="fk-east-1", cluster="ml-prod", settings={"project": "ml-platform"},
                            provider_config={"fakecloud:region": "fk-east-1"})
    settings = (Setting("project", True, "string", r"[a-z][a-z0-9-]{0,29}",
                        "a project id (lowercase letters, digits and '-', at most 30)"),)
    pool_names = NameRule(24, r"[a-z][a-z0-9-]{0,23}", "-", SOURCE)
    own_label_prefixes = ("fks.invalid/",)
    image_has_gpu_driver = True
    api_server_ports = (443,)
    image_has_container_toolkit = True
    disk_gib_range = (30, 2048, SOURCE)
