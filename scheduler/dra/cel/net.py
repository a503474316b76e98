"""Kubernetes' IP, CIDR and URL libraries for CEL (net.IP, net.CIDR, kubernetes.URL), with netip's and
net/url's error words."""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scheduler.dra.cel.functions import (
    cost_ceil,
    define,
    parses,
    size_of,
    string_parse_cost,
    traversal_price,
    unit_cost,
)
from scheduler.dra.cel.values import (
    CIDR,
    IP,
    URL,
    CelEvalError,
)

# ---- Kubernetes: IP and CIDR ----------------------------------------------------------------------------------


def _contains_ip_cost(args: list[Any], result: Any) -> int:
    cidr = size_of(args[0])
    cost = cost_ceil((cidr + cidr) * 0.1)
    if type(args[1]) is str:
        cost += cost_ceil(size_of(args[1]) * 0.1)
    return cost


def _contains_cidr_cost(args: list[Any], result: Any) -> int:
    cidr = size_of(args[0])
    cost = cost_ceil((cidr + cidr) * 0.1) + cost_ceil(cidr * 0.1) + 1
    if type(args[1]) is str:
        cost += cost_ceil(size_of(args[1]) * 0.1)
    return cost


def go_quote(s: str) -> str:
    """Go's strconv.Quote for the strings these messages quote (printable text as is, escapes otherwise)."""
    out = ['"']
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif not c.isprintable():
            code = ord(c)
            out.append(f"\\x{code:02x}" if code < 0x80 else (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


class _AddrError(Exception):
    def __init__(self, text: str, msg: str, at: str = "") -> None:
        super().__init__(msg)
        self.text = f"ParseAddr({go_quote(text)}): {msg}" + (f" (at {go_quote(at)})" if at else "")


def _ipv4_fields(whole: str, s: str) -> None:
    """netip's parseIPv4Fields, for its error messages."""
    val = pos = digits = 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if digits == 1 and val == 0:
                raise _AddrError(whole, "IPv4 field has octet with leading zero")
            val = val * 10 + ord(c) - 48
            digits += 1
            if val > 255:
                raise _AddrError(whole, "IPv4 field has value >255")
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise _AddrError(whole, "IPv4 field must have at least one digit", s[i:])
            if pos == 3:
                raise _AddrError(whole, "IPv4 address too long")
            pos += 1
            val = digits = 0
        else:
            raise _AddrError(whole, "unexpected character", s[i:])
    if pos < 3:
        raise _AddrError(whole, "IPv4 address too short")


def _ipv6_check(whole: str) -> bool:
    """netip's parseIPv6, for its error messages; returns whether a zone was given."""
    s, zone = whole, None
    if "%" in s:
        s, _, zone = s.partition("%")
        if not zone:
            raise _AddrError(whole, "zone must be a non-empty string")
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return zone is not None
    i = 0
    while i < 16:
        off = 0
        acc = 0
        while off < len(s) and s[off] in "0123456789abcdefABCDEF":
            acc = acc * 16 + int(s[off], 16)
            if off > 3:
                raise _AddrError(whole, "each group must have 4 or less digits", s)
            if acc > 0xFFFF:
                raise _AddrError(whole, "IPv6 field has value >=2^16", s)
            off += 1
        if off == 0:
            raise _AddrError(whole, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _AddrError(whole, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if i + 4 > 16:
                raise _AddrError(whole, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            _ipv4_fields(whole, s)
            s = ""
            i += 4
            break
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _AddrError(whole, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _AddrError(whole, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _AddrError(whole, "multiple :: in address", s)
            ellipsis = i
            s = s[1:]
            if not s:
                break
    if s:
        raise _AddrError(whole, "trailing garbage after address", s)
    if i < 16 and ellipsis < 0:
        raise _AddrError(whole, "address string too short")
    if i >= 16 and ellipsis >= 0:
        raise _AddrError(whole, "the :: must expand to at least one field of zeros")
    return zone is not None


def _netip_parse(s: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, bool]:
    """netip.ParseAddr: the address and whether it had a zone; raises _AddrError with netip's words."""
    for c in s:
        if c == ".":
            _ipv4_fields(s, s)
            return ipaddress.IPv4Address(s), False
        if c == ":":
            zoned = _ipv6_check(s)
            return ipaddress.IPv6Address(s.partition("%")[0]), zoned
        if c == "%":
            raise _AddrError(s, "missing IPv6 address")
    raise _AddrError(s, "unable to parse IP")


def _parse_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The ip library's parseIPAddr (no zones, no IPv4-mapped IPv6)."""
    try:
        addr, zoned = _netip_parse(s)
    except _AddrError as e:
        raise CelEvalError(f"IP Address {go_quote(s)} parse error during conversion from string: {e.text}") from None
    if zoned:
        raise CelEvalError(f"IP address {go_quote(s)} with zone value is not allowed")
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise CelEvalError(f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return addr


def _ip_fn(s: str) -> IP:
    return IP(_parse_ip(s))


_CIDR_ERROR = "network address parse error during conversion from string: "


def _parse_cidr(s: str) -> CIDR:
    """The cidr library's parseCIDR over netip.ParsePrefix; stringToCIDR prefixes the message once more."""

    def fail(msg: str) -> CelEvalError:
        return CelEvalError(_CIDR_ERROR + _CIDR_ERROR + f"netip.ParsePrefix({go_quote(s)}): {msg}")

    slash = s.rfind("/")
    if slash < 0:
        raise fail("no '/'")
    try:
        addr, zoned = _netip_parse(s[:slash])
    except _AddrError as e:
        raise fail(e.text) from None
    if zoned:
        raise fail("IPv6 zones cannot be present in a prefix")
    bits_text = s[slash + 1 :]
    if (len(bits_text) > 1 and not "1" <= bits_text[0] <= "9") or not re.fullmatch(r"[+-]?[0-9]+", bits_text):
        raise fail("bad bits after slash: " + go_quote(bits_text))
    bits = int(bits_text)
    if bits < 0 or bits > addr.max_prefixlen:
        raise fail("prefix length out of range")
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise CelEvalError(_CIDR_ERROR + f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return CIDR(addr, bits)


def _contains_ip(c: CIDR, other: Any) -> bool:
    addr = _parse_ip(other) if type(other) is str else other.addr
    return addr.version == c.addr.version and addr in c.network()


def _contains_cidr(c: CIDR, other: Any) -> bool:
    o = _parse_cidr(other) if type(other) is str else other
    return o.addr.version == c.addr.version and o.bits >= c.bits and o.addr in c.network()


define("ip", "ip(string) -> net.IP", _ip_fn, cost=string_parse_cost)
define("isIP", "isIP(string) -> bool", parses(_parse_ip), cost=string_parse_cost)
define("ip.isCanonical", "ip.isCanonical(string) -> bool", lambda s: str(_parse_ip(s)) == s,
       cost=traversal_price(0, 0.2))
define("family", "net.IP.family() -> int", lambda ip: ip.addr.version, cost=unit_cost)
define("isUnspecified", "net.IP.isUnspecified() -> bool", lambda ip: ip.addr.is_unspecified, cost=unit_cost)
define("isLoopback", "net.IP.isLoopback() -> bool", lambda ip: ip.addr.is_loopback, cost=unit_cost)
define("isLinkLocalMulticast", "net.IP.isLinkLocalMulticast() -> bool",
       lambda ip: ip.addr in ipaddress.ip_network("224.0.0.0/24" if ip.addr.version == 4 else "ff02::/16"),
       cost=unit_cost)
define("isLinkLocalUnicast", "net.IP.isLinkLocalUnicast() -> bool", lambda ip: ip.addr.is_link_local, cost=unit_cost)
define("isGlobalUnicast", "net.IP.isGlobalUnicast() -> bool",
       lambda ip: not (ip.addr.is_unspecified or ip.addr.is_loopback or ip.addr.is_multicast
                       or ip.addr.is_link_local or str(ip.addr) == "255.255.255.255"), cost=unit_cost)
define("cidr", "cidr(string) -> net.CIDR", _parse_cidr, cost=string_parse_cost)
define("isCIDR", "isCIDR(string) -> bool", parses(_parse_cidr), cost=string_parse_cost)
define("containsIP", "net.CIDR.containsIP(net.IP) -> bool", _contains_ip, cost=_contains_ip_cost)
define("containsIP", "net.CIDR.containsIP(string) -> bool", _contains_ip, cost=_contains_ip_cost)
define("containsCIDR", "net.CIDR.containsCIDR(net.CIDR) -> bool", _contains_cidr, cost=_contains_cidr_cost)
define("containsCIDR", "net.CIDR.containsCIDR(string) -> bool", _contains_cidr, cost=_contains_cidr_cost)
define("ip", "net.CIDR.ip() -> net.IP", lambda c: IP(c.addr), cost=unit_cost)
define("masked", "net.CIDR.masked() -> net.CIDR", lambda c: CIDR(c.network().network_address, c.bits), cost=unit_cost)
define("prefixLength", "net.CIDR.prefixLength() -> int", lambda c: c.bits, cost=unit_cost)

# The type names usable as conversion values (`type(x) == int`).


# ---- Kubernetes: URLs ---------------------------------------------------------------------------------------


def parse_url(s: str) -> URL:
    """url.ParseRequestURI then url.Parse: absolute URLs (or absolute paths) only, no spaces or controls."""
    if not s or any(c in s for c in " \t\n\r\x00\x7f") or not (s.startswith("/") or _URL_SCHEME.match(s)):
        raise CelEvalError(f'URL parse error during conversion from string: parse "{s}": invalid URI for request')
    return URL(urlsplit(s))


_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _hostname(u: URL) -> str:
    host = u.parts.netloc.rpartition("@")[2]
    if host.startswith("["):
        return str(host[1 : host.find("]")] if "]" in host else host[1:])
    return str(host.rpartition(":")[0] if ":" in host else host)


def _port(u: URL) -> str:
    host = u.parts.netloc.rpartition("@")[2]
    if host.startswith("["):
        rest = host[host.find("]") + 1 :] if "]" in host else ""
        return rest[1:] if rest.startswith(":") else ""
    return host.rpartition(":")[2] if ":" in host else ""


def _query(u: URL) -> dict[str, list[str]]:
    return {k: list(v) for k, v in parse_qs(u.parts.query, keep_blank_values=True).items()}


define("url", "url(string) -> kubernetes.URL", parse_url, cost=string_parse_cost)
define("isURL", "isURL(string) -> bool", parses(parse_url), cost=string_parse_cost)
define("getScheme", "kubernetes.URL.getScheme() -> string", lambda u: u.parts.scheme, cost=unit_cost)
define("getHost", "kubernetes.URL.getHost() -> string", lambda u: u.parts.netloc.rpartition("@")[2], cost=unit_cost)
define("getHostname", "kubernetes.URL.getHostname() -> string", _hostname, cost=unit_cost)
define("getPort", "kubernetes.URL.getPort() -> string", _port, cost=unit_cost)
define("getEscapedPath", "kubernetes.URL.getEscapedPath() -> string", lambda u: u.parts.path, cost=unit_cost)
define("getQuery", "kubernetes.URL.getQuery() -> map(string, list(string))", _query, cost=unit_cost)
