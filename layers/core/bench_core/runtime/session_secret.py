"""The session-signing secret, created by the stack itself: an SSM SecureString with a random
value, written only when the parameter does not exist (a value set by hand, or by an earlier
deployment, is never replaced), so `sam deploy --guided` needs no `aws ssm put-parameter`."""

from __future__ import annotations

import secrets
from typing import Any

SECRET_BYTES = 48
"""`token_urlsafe(48)` is 64 characters, over the 32 the session signer asks for."""


def ensure_secure_string(name: str, *, client: Any = None) -> bool:
    """Create the SecureString `name` with a random value unless it exists; whether it created
    it. Standard parameters with the AWS-managed aws/ssm key cost nothing, idle or read."""
    if client is None:
        import boto3

        client = boto3.client("ssm")
    try:
        client.put_parameter(Name=name, Type="SecureString", Tier="Standard", Overwrite=False,
                             Value=secrets.token_urlsafe(SECRET_BYTES),
                             Description="Bench session-signing secret (created by the stack)")
    except client.exceptions.ParameterAlreadyExists:
        return False
    return True
