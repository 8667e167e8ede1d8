"""An S3 bucket as the drop for answers too big for Lambda (`ports/files.py`): each file is
written by a multipart upload, a part at a time as it is made (so a file of any size holds one
part in memory), and answered with a presigned GET that lasts `ports.files.LINK_S`. The bucket is private
and forgets its files after a day (template.yaml `ExportBucket`); the link, with its random
name, is the only way in."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from ..ports.files import LINK_S

PART_BYTES = 8 * 1024 * 1024
"""Each uploaded part (S3 takes parts of 5 MB at least, the last one aside)."""
CLIENT_CONFIG = Config(signature_version="s3v4", s3={"addressing_style": "virtual"})
"""Links signed with Signature Version 4 (what every region takes, and what bounds a link's
life by `X-Amz-Expires`), to the bucket's own host name."""
PREFIX = "exports/"
"""Where the files go in the bucket: what the API function may write and read there."""


class S3Drop:
    def __init__(self, bucket: str, client: Any = None) -> None:
        """Made by the first export that asks for it (`runtime.adapters.Services.files`), so
        a process that never drops a file never pays for its client."""
        self.bucket = bucket
        self.client = client or boto3.client("s3", config=CLIENT_CONFIG)

    def put(self, name: str, chunks: Iterable[bytes], media_type: str) -> str:
        s3, key = self.client, PREFIX + name
        upload = s3.create_multipart_upload(Bucket=self.bucket, Key=key, ContentType=media_type)
        where = {"Bucket": self.bucket, "Key": key, "UploadId": upload["UploadId"]}
        parts: list[dict[str, Any]] = []
        try:
            part = bytearray()
            for chunk in chunks:
                part += chunk
                if len(part) >= PART_BYTES:
                    parts.append(self._part(s3, where, len(parts) + 1, bytes(part)))
                    part.clear()
            if part or not parts:
                parts.append(self._part(s3, where, len(parts) + 1, bytes(part)))
            s3.complete_multipart_upload(**where, MultipartUpload={"Parts": parts})
        except BaseException:
            s3.abort_multipart_upload(**where)
            raise
        return self._signed(key)

    def link(self, name: str) -> str | None:
        try:
            self.client.head_object(Bucket=self.bucket, Key=PREFIX + name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return self._signed(PREFIX + name)

    def _signed(self, key: str) -> str:
        filename = key.rsplit("/", 1)[-1]
        return str(self.client.generate_presigned_url(
            "get_object", ExpiresIn=LINK_S,
            Params={"Bucket": self.bucket, "Key": key,
                    "ResponseContentDisposition": f'attachment; filename="{filename}"'}))

    @staticmethod
    def _part(s3: Any, where: dict[str, str], number: int, body: bytes) -> dict[str, Any]:
        answer = s3.upload_part(**where, PartNumber=number, Body=body)
        return {"PartNumber": number, "ETag": answer["ETag"]}
