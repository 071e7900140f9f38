"""API tokens over REST, for admin tokens: list (never a secret), create (the secret is in that answer only),
revoke (refused from the next request on, in every process sharing the store). No server restart is needed."""

from __future__ import annotations

from fastapi import APIRouter, status

from web import schemas, views
from web.deps import Admin, Limit, Offset, Service

router = APIRouter(prefix="/api/tokens", tags=["tokens"], responses=schemas.ERRORS)


@router.get("", response_model=schemas.Page[schemas.Token])
def list_tokens(service: Service, _: Admin, limit: Limit = 50, offset: Offset = 0):
    return views.page(service.tokens(), limit, offset)


@router.post("", response_model=schemas.TokenCreated, status_code=status.HTTP_201_CREATED)
def create_token(body: schemas.TokenIn, service: Service, who: Admin):
    token, secret = service.create_token(body.name, body.role, who)
    return {**token, "secret": secret}


@router.delete("/{ref}", response_model=schemas.Token)
def revoke_token(ref: str, service: Service, who: Admin):
    return service.revoke_token(ref, who)
