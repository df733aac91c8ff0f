"""How PostgreSQL keeps a job's plans: the seed, the count and the first plans' layout."""

from videocopies.adapters.postgres.job_plans import plans_from_json, plans_json
from videocopies.domain.effects import LAYOUT, SeededPlans, plan_copies


def test_a_jobs_stored_seed_keeps_its_layout_and_a_seed_stored_before_layouts_is_layout_1():
    assert plans_json(SeededPlans(7, 5), keep_seed=True) == {"seed": 7, "copies": 5, "layout": LAYOUT}
    assert plans_json(SeededPlans(7, 5, 1), keep_seed=True) == {"seed": 7, "copies": 5}
    assert plans_from_json({"seed": 7, "copies": 5, "layout": 2}) == SeededPlans(7, 5, 2)
    assert plans_from_json({"seed": 7, "copies": 5}) == SeededPlans(7, 5, 1)
    assert tuple(plans_from_json(plans_json(SeededPlans(7, 5), keep_seed=False))) == plan_copies(7, 5, LAYOUT)
