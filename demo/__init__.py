"""The demo: the studio's tiny CPU models (built from the seed generator's sketches, no Hub
download), the rule-based demo curator, and `manage.py demo_setup`, which builds the model, seeds
and grades the demo pool and freezes it."""
