"""`bench login`'s device flow over HTTP (bench_core.accounts.device): the CLI's two JSON
endpoints and the page where a signed-in user approves or denies a code.

`POST /api/cli/device/code` → `{device_code, user_code, verification_uri,
verification_uri_complete, interval, expires_in}`; `POST /api/cli/device/token` with
`{"device_code"}` → 200 `{key, login}` (a fresh owner key, shown this once) or 400
`{"error": "authorization_pending" | "slow_down" | "access_denied" | "expired_token"}`.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from ..accounts import device
from ..runtime.adapters import Services
from . import public_base, services_of
from .browser import NO_STORE, AccountRoute, account_session, check_csrf, csrf_for, form_fields
from .deps import client_of
from .templating import page

api_router = APIRouter(prefix="/api/cli/device")
router = APIRouter(route_class=AccountRoute)

class TokenRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    device_code: str = Field(min_length=1, max_length=200)


@api_router.post("/code")
async def device_code(request: Request, services: Services = Depends(services_of)
                      ) -> JSONResponse:
    client = client_of(request, services)
    started = await run_in_threadpool(device.start_for, services.store, client,
                                      services.settings.accounts.device_interval_s)
    uri = public_base(request, services) + "/device"
    return JSONResponse({"device_code": started.device_code, "user_code": started.user_code,
                         "verification_uri": uri,
                         "verification_uri_complete": f"{uri}?code={started.user_code}",
                         "interval": started.interval, "expires_in": started.expires_in},
                        headers=NO_STORE)


@api_router.post("/token")
async def device_token(body: TokenRequest, services: Services = Depends(services_of)
                       ) -> JSONResponse:
    answer = await run_in_threadpool(device.redeem, services.store, body.device_code,
                                     services.settings.accounts.device_interval_s)
    return JSONResponse(answer, status_code=400 if "error" in answer else 200, headers=NO_STORE)


@router.get("/device")
async def device_page(request: Request, code: str = "",
                      services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    user_code = device.normalize_user_code(code) if code else None
    known = user_code is not None and await run_in_threadpool(device.pending, services.store,
                                                              user_code)
    token = await csrf_for(request, services)
    return page(request, "device.html", viewer=None, login=session.login, user_code=user_code,
                typed=code, known=known, csrf=token.token, headers=NO_STORE)


@router.post("/device")
async def device_decide(request: Request, services: Services = Depends(services_of)) -> Response:
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    user_code = device.normalize_user_code(fields.get("user_code", ""))
    approve = fields.get("decision") == "approve"
    done = user_code is not None and await run_in_threadpool(
        device.decide, services.store, user_code, session.login, approve)
    token = await csrf_for(request, services)
    return page(request, "device.html", viewer=None, login=session.login, user_code=user_code,
                typed=fields.get("user_code", ""), known=False, csrf=token.token,
                decided="approved" if done and approve else "denied" if done else "unknown",
                headers=NO_STORE, status=200 if done else 400)
