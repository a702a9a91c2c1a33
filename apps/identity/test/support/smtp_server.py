"""A real SMTP server for identity's mail tests, from Python's standard library (smtpd, Python <= 3.11).

Listens on 127.0.0.1 on a port the kernel picks and reports each step as a JSON line on stdout:
  {"event": "listening", "port": P}
  {"event": "connect"}                       a client connected (before the greeting)
  {"event": "greeting"}                      the 220 greeting is about to be sent
  {"event": "tempfail", "n": N}              the N-th message was answered 451 (--tempfail)
  {"event": "rejected", "n": N}              the N-th message was answered 550 (--reject)
  {"event": "message", "mailfrom", "rcpttos", "from", "to", "subject", "body"}   a message was accepted
Options: --greeting-delay SECONDS (the whole server waits before greeting: a slow server), --tempfail N (the
first N messages get a transient 451), --reject (every message gets a permanent 550). Stops on SIGTERM.
"""

import argparse
import json
import sys
import time
import warnings

with warnings.catch_warnings():
    # smtpd and asyncore are deprecated (removed in Python 3.12) but they are what this machine provides.
    warnings.simplefilter("ignore", DeprecationWarning)
    import asyncore
    import smtpd

import email
import email.policy


def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class Channel(smtpd.SMTPChannel):
    def __init__(self, *args, **kwargs):
        emit({"event": "greeting"})
        super().__init__(*args, **kwargs)


class Server(smtpd.SMTPServer):
    channel_class = Channel

    def __init__(self, options):
        super().__init__(("127.0.0.1", 0), None, decode_data=False)
        self.options = options
        self.count = 0

    def handle_accepted(self, conn, addr):
        emit({"event": "connect"})
        if self.options.greeting_delay > 0:
            # Blocks the whole (single-threaded) server: the client waits for its greeting meanwhile.
            time.sleep(self.options.greeting_delay)
        super().handle_accepted(conn, addr)

    def process_message(self, peer, mailfrom, rcpttos, data, **kwargs):
        self.count += 1
        if self.count <= self.options.tempfail:
            emit({"event": "tempfail", "n": self.count})
            return "451 4.3.0 Try again later"
        if self.options.reject:
            emit({"event": "rejected", "n": self.count})
            return "550 5.7.1 Message refused"
        message = email.message_from_bytes(data, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain",))
        emit(
            {
                "event": "message",
                "mailfrom": mailfrom,
                "rcpttos": rcpttos,
                "from": str(message["From"]),
                "to": str(message["To"]),
                "subject": str(message["Subject"]),
                "body": body.get_content() if body is not None else "",
            }
        )
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--greeting-delay", type=float, default=0)
    parser.add_argument("--tempfail", type=int, default=0)
    parser.add_argument("--reject", action="store_true")
    server = Server(parser.parse_args())
    emit({"event": "listening", "port": server.socket.getsockname()[1]})
    asyncore.loop(timeout=0.2)


if __name__ == "__main__":
    main()
