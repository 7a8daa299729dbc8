"""Every tab's handlers on one engine and request root, for tests that call events directly
(the app builds the same objects in ``webui.app.build_app``)."""

from __future__ import annotations

from dataclasses import dataclass

from webui.serving.url_input import UrlPolicy
from webui.serving.workspace import Workspace
from webui.tabs.decode import DecodeHandlers
from webui.tabs.encode import EncodeHandlers
from webui.tabs.roundtrip import RoundTripHandlers
from webui.tabs.status_bar import StatusHandlers
from webui.tabs.system import SystemHandlers


@dataclass
class Tabs:
    roundtrip: RoundTripHandlers
    encode: EncodeHandlers
    decode: DecodeHandlers
    status: StatusHandlers
    system: SystemHandlers

    @classmethod
    def of(cls, engine, workspace: Workspace, url_policy: UrlPolicy | None = None) -> Tabs:
        return cls(
            RoundTripHandlers(engine, workspace, url_policy),
            EncodeHandlers(engine, workspace),
            DecodeHandlers(engine, workspace),
            StatusHandlers(engine, workspace),
            SystemHandlers(engine, workspace),
        )

    @property
    def engine(self):
        return self.roundtrip.engine

    @property
    def workspace(self) -> Workspace:
        return self.roundtrip.workspace

    def event(self, name: str):
        """The handler method called ``name``, on whichever tab has it."""
        for tab in (self.roundtrip, self.encode, self.decode, self.status, self.system):
            if hasattr(tab, name):
                return getattr(tab, name)
        raise AttributeError(name)
