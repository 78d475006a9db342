"""The rollout editor: lint as you type, revisions (render, score, collect), compare, promote."""
