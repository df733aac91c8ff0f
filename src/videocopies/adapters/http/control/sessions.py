"""Operators' sessions: a password opens one; each session carries its own CSRF token.

Sessions live in this process only (a restarted panel asks for the password again). The
session id travels in an HttpOnly, SameSite=Strict cookie; every form carries the session's
CSRF token, and a POST without the matching token, or from another origin, is refused.
"""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime, timedelta

import attrs

from videocopies.application.ports import Clock

COOKIE = "videocopies_control"


@attrs.frozen
class Session:
    session_id: str
    csrf_token: str
    expires_at: datetime


class PanelSessions:
    def __init__(self, password: str, clock: Clock, ttl: timedelta = timedelta(hours=12)) -> None:
        if len(password) < 8:
            raise ValueError("the control panel's password must have at least 8 characters")
        self._password, self._clock, self._ttl = password.encode(), clock, ttl
        self._sessions: dict[str, Session] = {}

    def open(self, password: str) -> Session | None:
        if not hmac.compare_digest(password.encode(), self._password):
            return None
        now = self._clock.now()
        self._sessions = {key: s for key, s in self._sessions.items() if s.expires_at > now}
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now + self._ttl)
        self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        session = self._sessions.get(session_id or "")
        if session is None or session.expires_at <= self._clock.now():
            return None
        return session

    def close(self, session_id: str | None) -> None:
        self._sessions.pop(session_id or "", None)

    @staticmethod
    def csrf_matches(session: Session, token: str | None) -> bool:
        return hmac.compare_digest(session.csrf_token.encode(), (token or "").encode())
