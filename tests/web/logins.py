"""Logging a test client in through the login form as a browser does: GET /login sets the browser's login CSRF
cookie and puts the same token in the form's hidden ``csrf`` field; POST /login must send it back."""

from __future__ import annotations

import re


def login_csrf(client) -> str:
    """The login form's CSRF token (its cookie is now in the client's jar)."""
    page = client.get("/login")
    assert page.status_code == 200, page.text
    return re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)


def log_in(client, secret: str, next: str = "/"):
    """POST the login form with ``secret`` and the form's CSRF token; the response (303 when it worked)."""
    return client.post("/login", data={"token": secret, "next": next, "csrf": login_csrf(client)},
                       follow_redirects=False)
