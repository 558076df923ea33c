"""stapel-serve: a web board to play the agents, watch their search and replay PDN games.

``create_app`` builds the FastAPI app (docs/web_api.md); the page is plain
HTML/CSS/JS under ``static/``, served by the app, with no build step.
"""

from stapel_rl.web.app import create_app

__all__ = ["create_app"]
