#!/usr/bin/env python3
"""An example crawlkeeper processor: product facts from shop pages.

Run by crawlkeeper as a long-lived child process:

    crawlkeeper crawl https://shop.example/ --follow \
        --processor 'products=python3 examples/processors/products.py' --use products

It speaks the processor protocol, version 1 (docs/guide/processors.md):
one JSON request per line on stdin, one JSON answer per line on stdout,
with the request's id. Python's standard library only.

For every HTML page it adds the field `words` (the words a reader sees),
and for a page with a product title (`h1.product-title`) and a price
(the first `.price` that is not `.old`) the field `product`:
`{"name": …, "price_cents": …, "images": …}`. A page whose price does not
read is failed with an `error`, which crawlkeeper records as the page's
error (kind `processor`); the crawl goes on.
"""

import base64
import json
import sys
from decimal import Decimal, InvalidOperation
from html.parser import HTMLParser

PROTOCOL = 1


class ProductPage(HTMLParser):
    """What the processor reads in one page, in one pass."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hidden = 0  # inside script or style
        self.capture = None  # (what, tag, [text parts]) being read
        self.name = None
        self.price = None
        self.images = 0
        self.words = 0

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag in ("script", "style"):
            self.hidden += 1
        elif tag == "h1" and "product-title" in classes and self.name is None:
            self.capture = ("name", tag, [])
        elif tag == "span" and "price" in classes and "old" not in classes and self.price is None:
            self.capture = ("price", tag, [])
        elif tag == "img" and "gallery" in classes:
            self.images += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.hidden:
            self.hidden -= 1
        if self.capture and tag == self.capture[1]:
            what, _, parts = self.capture
            setattr(self, what, " ".join("".join(parts).split()))
            self.capture = None

    def handle_data(self, data):
        if self.hidden:
            return
        self.words += len(data.split())
        if self.capture:
            self.capture[2].append(data)


def process(request):
    """The answer's additions for one page (or an error)."""
    headers = {name.lower(): value for name, value in request.get("headers", [])}
    if "html" not in headers.get("content-type", ""):
        return {}
    body = base64.b64decode(request.get("body", ""))
    page = ProductPage()
    page.feed(body.decode("utf-8", errors="replace"))
    page.close()
    fields = {"words": page.words}
    if page.name is not None and page.price is not None:
        try:
            cents = int(Decimal(page.price.replace(",", "")) * 100)
        except InvalidOperation:
            return {"error": f"price {page.price!r} is not a number"}
        fields["product"] = {"name": page.name, "price_cents": cents, "images": page.images}
    return {"fields": fields}


def main():
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            # Without an id nothing can be answered; crawlkeeper never
            # sends such a line.
            continue
        answer = {"id": request.get("id")}
        try:
            if request.get("v") != PROTOCOL:
                answer["error"] = f"protocol version {request.get('v')!r} is not {PROTOCOL}"
            else:
                answer.update(process(request))
        except Exception as e:  # a bad page fails itself, not the processor
            answer = {"id": request.get("id"), "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    # stdin closed: crawlkeeper is done with this processor.


if __name__ == "__main__":
    main()
