"""Where a shared test's link points (``webui.serving.share_link``): the first --public-origin, else
the address the owner's browser used unless it is loopback, else this machine's address when the
server listens beyond loopback, else the loopback link with a warning."""

from __future__ import annotations

import pytest

from webui.serving import share_link
from webui.serving.share_link import LinkSettings, link_base

LOCAL = ("http", "127.0.0.1", 7860)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.3.4.5", True), ("localhost", True), ("[::1]", True), ("app.localhost", True),
     ("192.168.1.20", False), ("codec.example.org", False), ("[fd00::2]", False)],
)  # fmt: skip
def test_loopback_hosts(host, loopback):
    assert share_link.is_loopback(host) is loopback


def test_the_first_public_origin_wins_in_the_order_written():
    base = link_base("https://codec.example.org, http://10.0.0.5:7860", LOCAL, ("127.0.0.1", 7860))
    assert base.url == "https://codec.example.org" and base.note is None
    assert link_base("http://10.0.0.5:7860,https://a.example", LOCAL, ("0.0.0.0", 7860)).url == "http://10.0.0.5:7860"


def test_an_address_others_can_use_is_kept():
    base = link_base("", ("http", "192.168.1.20", 7860), ("0.0.0.0", 7860))
    assert base.url == "http://192.168.1.20:7860" and base.note is None
    assert link_base("", ("https", "codec.example.org", 443), ("127.0.0.1", 7860)).url == "https://codec.example.org"


def test_a_loopback_page_on_a_server_bound_to_an_address_links_that_address():
    base = link_base("", LOCAL, ("192.0.2.7", 7911))
    assert base.url == "http://192.0.2.7:7911" and base.note == "share.link_machine"
    assert base.fields == {"address": "192.0.2.7", "seen": "http://127.0.0.1:7860"}


def test_a_loopback_page_on_a_server_on_every_interface_links_this_machine():
    address = share_link.machine_address()
    if address is None:
        pytest.skip("this machine has no address beyond loopback")
    base = link_base("", LOCAL, ("0.0.0.0", 7911))
    assert base.url == f"http://{address}:7911" and base.note == "share.link_machine"
    assert not share_link.is_loopback(address)


def test_loopback_only_is_warned():
    base = link_base("", LOCAL, ("127.0.0.1", 7860))
    assert base.url == "http://127.0.0.1:7860" and base.note == "share.link_loopback"
    assert link_base("", ("http", "localhost", 7860), ("localhost", 7860)).note == "share.link_loopback"


def test_a_forwarded_host_is_believed_only_from_a_trusted_proxy():
    scope = {
        "scheme": "http",
        "client": ("127.0.0.1", 5000),
        "headers": [(b"host", b"127.0.0.1:7860"), (b"x-forwarded-host", b"evil.example")],
    }
    assert LinkSettings(listening=lambda: ("127.0.0.1", 7860)).for_scope(scope).note == "share.link_loopback"
    trusted = LinkSettings(trusted=frozenset({"127.0.0.1"}), listening=lambda: ("127.0.0.1", 7860))
    assert trusted.for_scope(scope).url == "http://evil.example"
