"""Secrets the settings name but do not hold: the SMTP password from a Prefect Secret block."""

from __future__ import annotations

from typing import cast

from pydantic import SecretStr

from paperwatch.settings import Settings, SmtpSettings


def resolve_smtp_password(settings: Settings | SmtpSettings) -> SecretStr | None:
    """The SMTP password: ``smtp.password`` (environment) first, else a Prefect Secret block.

    ``smtp.password`` is only ever set from the environment (``PAPERWATCH_SMTP__PASSWORD``;
    the TOML loader refuses it). Otherwise, when ``smtp.password_block`` names a Prefect
    Secret block, its value is loaded (``Secret.load(name).get()``; needs the Prefect API).
    The value is returned wrapped in :class:`pydantic.SecretStr` and never logged.

    Args:
        settings: the whole :class:`~paperwatch.settings.Settings` or its ``smtp`` part.

    Returns:
        The password, or ``None`` when neither is configured (no login).

    Raises:
        RuntimeError: the Secret block cannot be loaded (the message names the block only).
    """
    smtp = settings.smtp if isinstance(settings, Settings) else settings
    if smtp.password is not None:
        return smtp.password
    if not smtp.password_block:
        return None
    from prefect.blocks.system import Secret

    try:
        block = cast(Secret, Secret.load(smtp.password_block))
        value = block.get()
    except Exception as exc:
        raise RuntimeError(
            f"cannot load the SMTP password from Prefect Secret block "
            f"{smtp.password_block!r}: {type(exc).__name__}"
        ) from None
    return SecretStr(str(value))
