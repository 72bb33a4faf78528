"""FastAPI dependency providers: routes ask for what they need, tests swap the container."""

from __future__ import annotations

from fastapi import Request

from backend.container import Services


def get_services(request: Request) -> Services:
    return request.app.state.services
