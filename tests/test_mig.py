"""The MIG model: profiles per GPU, maximum counts, `+me`, and NVIDIA's placement rules."""

from __future__ import annotations

import pytest

from gpustack.catalog import load_catalog
from gpustack.catalog.mig import MIG_MODELS, InvalidLayout, MigModel, Profile, ProfileShape

A100 = MIG_MODELS["A100-80GB"]


@pytest.mark.parametrize("layout, fits", [
    ({"3g.40gb": 2}, True),
    ({"4g.40gb": 1, "3g.40gb": 1}, True),
    ({"2g.20gb": 3, "1g.10gb": 1}, True),
    ({"4g.40gb": 2}, False),
    # 3g at slot 4 leaves slots 0-3 for four 1g; at slot 0 only three would fit (no 1g starts at 7).
    ({"3g.40gb": 1, "1g.10gb": 4}, True),
    ({"1g.10gb": 7}, True),
    ({"1g.10gb": 8}, False),
    ({"1g.20gb": 4}, True),
    ({"1g.20gb": 5}, False),
    ({"2g.20gb": 3, "1g.20gb": 1}, True),
    ({"4g.40gb": 1, "2g.20gb": 1, "1g.20gb": 1}, True),
    ({"4g.40gb": 1, "2g.20gb": 2}, False),  # 8 compute slices
    ({"7g.80gb": 1, "1g.10gb": 1}, False),
    ({"1g.10gb+me": 1, "1g.10gb": 6}, True),
    ({"1g.10gb+me": 2}, False),  # one +me per GPU
])
def test_a100_80gb_layouts_follow_the_placement_rules(layout, fits):
    assert A100.is_valid(layout) is fits
    assert (A100.violations(layout) == []) is fits


def test_every_full_layout_of_the_placement_table_is_valid_and_each_one_more_instance_is_not():
    # The 7/7-compute layouts derived from NVIDIA's placement table (1g, 1g2 = 2-slice 1g, 2g, 3g, 4g, 7g).
    full = [{"7g": 1}, {"4g": 1, "3g": 1}, {"3g": 1, "2g": 2}, {"3g": 1, "2g": 1, "1g": 2}, {"3g": 1, "1g": 4},
            {"4g": 1, "2g": 1, "1g": 1}, {"4g": 1, "1g": 3}, {"2g": 3, "1g": 1}, {"2g": 2, "1g": 3},
            {"2g": 1, "1g": 5}, {"1g": 7}, {"1g2": 1, "1g": 6}, {"2g": 1, "1g2": 1, "1g": 4},
            {"2g": 2, "1g2": 1, "1g": 2}, {"2g": 3, "1g2": 1}, {"4g": 1, "1g2": 1, "1g": 2},
            {"4g": 1, "2g": 1, "1g2": 1}]
    names = {"1g": "1g.10gb", "1g2": "1g.20gb", "2g": "2g.20gb", "3g": "3g.40gb", "4g": "4g.40gb", "7g": "7g.80gb"}
    for generic in full:
        layout = {names[k]: v for k, v in generic.items()}
        assert A100.is_valid(layout), layout
        assert A100.slices(layout)[0] == 7
        for extra in names.values():  # full compute: nothing more fits
            assert not A100.is_valid({**layout, extra: layout.get(extra, 0) + 1}), (layout, extra)


def test_placement_puts_each_instance_on_an_allowed_start_slot_without_overlap():
    for model in MIG_MODELS.values():
        for layout in model.valid_layouts():
            placed = model.place(dict(layout))
            assert placed is not None and len(placed) == sum(c for _, c in layout)
            used: set[int] = set()
            for name, start in placed:
                shape = model.profile(name).shape
                assert start in shape.starts
                span = set(range(start, start + shape.memory))
                assert max(span) < model.memory_slices and not used & span
                used |= span


@pytest.mark.parametrize("model", sorted(MIG_MODELS))
def test_each_profile_alone_fits_exactly_its_maximum_count(model):
    mig = MIG_MODELS[model]
    for profile in mig.profiles:
        assert mig.is_valid({profile.name: profile.shape.max_count})
        assert not mig.is_valid({profile.name: profile.shape.max_count + 1})
        assert mig.violations({profile.name: profile.shape.max_count + 1}) == [
            f"{profile.shape.max_count + 1} x {profile.name}: at most {profile.shape.max_count} per GPU"]


def test_models_carry_the_profiles_nvidia_lists():
    expected = {
        "A100-40GB": "1g.5gb 1g.5gb+me 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb",
        "A100-80GB": "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb",
        "H100-80GB": "1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb",
        "H100-NVL-94GB": "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.47gb 4g.47gb 7g.94gb",
        "GH200-96GB": "1g.12gb 1g.12gb+me 1g.24gb 2g.24gb 3g.48gb 4g.48gb 7g.96gb",
        "GH200-144GB": "1g.18gb 1g.18gb+me 1g.36gb 2g.36gb 3g.72gb 4g.72gb 7g.144gb",
        "H200-141GB": "1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb",
        "B200": "1g.23gb 1g.23gb+me 1g.45gb 2g.45gb 3g.90gb 4g.90gb 7g.180gb",
        "A30": "1g.6gb 1g.6gb+me 2g.12gb 2g.12gb+me 4g.24gb",
    }
    assert {name: " ".join(m.profile_names) for name, m in MIG_MODELS.items()} == expected
    maxima = {p.name: p.shape.max_count for p in MIG_MODELS["A30"].profiles}
    assert maxima == {"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1}


def test_mig_parted_balanced_layouts_are_valid():
    for model in MIG_MODELS.values():
        if model.balanced:
            assert model.is_valid(dict(model.balanced)), model.name


def test_a30_allows_one_media_instance_and_four_slices():
    a30 = MIG_MODELS["A30"]
    assert a30.is_valid({"1g.6gb": 2, "2g.12gb+me": 1})
    assert not a30.is_valid({"1g.6gb+me": 1, "2g.12gb+me": 1})
    assert not a30.is_valid({"2g.12gb": 2, "1g.6gb": 1})


def test_two_media_instances_never_share_a_gpu_and_the_message_says_so():
    # The A30 has two +me profiles, each allowed once: together they fit the slices (3 of 4) but not
    # NVIDIA's one-media-instance rule, so only that rule refuses them.
    a30 = MIG_MODELS["A30"]
    both = {"1g.6gb+me": 1, "2g.12gb+me": 1}
    assert a30.slices(both) == (3, 3)
    assert a30.place(both) is None
    assert a30.violations(both) == ["2 +me instances: at most one per GPU"]
    assert all(not (dict(layout).get("1g.6gb+me") and dict(layout).get("2g.12gb+me"))
               for layout in a30.valid_layouts())
    with pytest.raises(InvalidLayout, match=r"2 \+me instances: at most one per GPU"):
        a30.require_valid(both)
    assert A100.violations({"1g.10gb+me": 2, "1g.10gb": 5}) == ["2 x 1g.10gb+me: at most 1 per GPU"]


def test_instances_whose_start_slots_collide_are_refused_in_words():
    # A geometry whose slice totals fit but whose start slots overlap (two 4-slice instances that may
    # both start only at slot 0): only the placement search can refuse it, and the user reads why.
    shape = ProfileShape("4g", 3, 4, (0,), 2)
    model = MigModel("X-80GB", 80, 7, 8, (Profile("4g.40gb", shape, 40),), "a geometry for this test")
    assert model.slices({"4g.40gb": 2}) == (6, 8)
    assert model.place({"4g.40gb": 2}) is None
    assert model.violations({"4g.40gb": 2}) == ["no start slots place every instance without overlap"]
    assert model.violations({"4g.40gb": 1}) == []
    with pytest.raises(InvalidLayout, match="no start slots place every instance without overlap"):
        model.require_valid({"4g.40gb": 2})


def test_require_valid_names_every_broken_rule():
    with pytest.raises(InvalidLayout) as info:
        A100.require_valid({"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1})
    assert str(info.value) == ("invalid A100-80GB MIG layout {1g.10gb: 1, 3g.40gb: 1, 4g.40gb: 1}: "
                               "8 compute slices: the GPU has 7; 9 memory slices: the GPU has 8")
    assert A100.violations({"9g.1gb": 1}) == ["9g.1gb is not a MIG profile of A100-80GB"]


def test_smallest_holding_never_picks_a_media_profile():
    assert A100.smallest_holding(memory_gib=9).name == "1g.10gb"
    assert A100.smallest_holding(memory_gib=11).name == "1g.20gb"
    assert A100.smallest_holding(compute_fraction=0.3).name == "3g.40gb"


def test_every_mig_gpu_of_the_catalog_has_a_model():
    catalog = load_catalog()
    with_mig = {name for name, gpu in catalog.gpus.items() if gpu.mig is not None}
    assert {"A100-40GB", "A100-80GB", "H100", "H200", "B200"} <= with_mig
    assert not MIG_MODELS["H200-141GB"].placements_confirmed and MIG_MODELS["A100-80GB"].placements_confirmed
