"""A DNS server on loopback for the domain checks: TXT, CNAME, A and AAAA answers from a dict (dnslib).

`zone.set("www.example.com", "CNAME", "cname.localhost")`, `zone.remove(...)` while it runs; a name with no
record of any type is NXDOMAIN, a known name without the asked type an empty answer (NOERROR)."""
from dnslib import AAAA, CNAME, QTYPE, RCODE, RR, TXT, A
from dnslib.server import DNSLogger, DNSServer

RDATA = {"A": A, "AAAA": AAAA, "CNAME": CNAME, "TXT": TXT}


class _Resolver:
    def __init__(self):
        self.records: dict[tuple[str, str], list[str]] = {}
        self.queries: list[tuple[str, str]] = []

    def resolve(self, request, handler):
        reply = request.reply()
        name, qtype = str(request.q.qname).rstrip(".").lower(), QTYPE[request.q.qtype]
        self.queries.append((name, qtype))
        if not any(key[0] == name for key in self.records):
            reply.header.rcode = RCODE.NXDOMAIN
            return reply
        for value in self.records.get((name, qtype), []):
            reply.add_answer(RR(request.q.qname, getattr(QTYPE, qtype), rdata=RDATA[qtype](value), ttl=0))
        return reply


class DnsZone:
    def __init__(self):
        self.resolver = _Resolver()
        self.server = DNSServer(self.resolver, address="127.0.0.1", port=0,
                                logger=DNSLogger("-request,-reply,-truncated,-error,-recv,-send,-data", False))

    @property
    def address(self) -> str:
        return "127.0.0.1:%d" % self.server.server.server_address[1]

    @property
    def queries(self):
        return self.resolver.queries

    def set(self, name: str, rdtype: str, *values: str) -> None:
        self.resolver.records[(name.lower(), rdtype)] = list(values)

    def remove(self, name: str, rdtype: str) -> None:
        self.resolver.records.pop((name.lower(), rdtype), None)

    def start(self):
        self.server.start_thread()
        return self

    def stop(self):
        self.server.stop()
        self.server.server.server_close()
