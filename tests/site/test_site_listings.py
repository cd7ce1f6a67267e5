"""Every "Listing 3.x" runs when a reader pastes it, in both editions.

The text is taken from the built page exactly as a reader copies it (the
``<pre>`` of the listing, import lines included) and run in a fresh
namespace: nothing else is imported. The class it defines is then built with
the chapter's arguments and seed, and must print the chapter's numbers and
equal the package's class given the same weights.
"""

from __future__ import annotations

import re

import pytest
import torch

import attention
from attention import example_inputs

pytestmark = pytest.mark.site

#: Listing number -> (class, its constructor arguments, seed, input rank,
#: the chapter's first output row for example_inputs()).
LISTINGS = {
    "3.1": ("SelfAttention_v1", (3, 2), 123, 2, [0.2996, 0.8053]),
    "3.2": ("SelfAttention_v2", (3, 2), 789, 2, [-0.0739, 0.0713]),
    "3.3": ("CausalAttention", (3, 2, 6, 0.0), 123, 3, [-0.4519, 0.2216]),
    "3.4": (
        "MultiHeadAttentionWrapper",
        (3, 2, 6, 0.0, 2),
        123,
        3,
        [-0.4519, 0.2216, 0.4772, 0.1063],
    ),
    "3.5": ("MultiHeadAttention", (3, 2, 6, 0.0, 2), 123, 3, [0.3190, 0.4858]),
}
CAPTION = re.compile(r"(?:Listing|代码清单)\s*(3\.\d+)")


def shown_listings(site) -> dict[str, str]:
    """Listing number -> the code its page shows, as a reader copies it."""
    found = {}
    for page in site.book_pages:
        for wrapper in page.soup.select(".pysource-listing"):
            caption = wrapper.select_one(".pysource-caption").get_text(" ", strip=True)
            match = CAPTION.match(caption)
            if match:
                found[match.group(1)] = wrapper.select_one("pre").get_text()
    return found


def test_every_listing_is_found(site):
    assert sorted(shown_listings(site)) == sorted(LISTINGS)


@pytest.mark.parametrize("number", sorted(LISTINGS))
def test_listing_runs_when_pasted(site, number):
    name, args, seed, rank, first_row = LISTINGS[number]
    code = shown_listings(site)[number]
    namespace: dict = {"__name__": f"listing_{number.replace('.', '_')}"}
    exec(compile(code, f"<Listing {number}>", "exec"), namespace)  # noqa: S102
    pasted_cls = namespace[name]
    assert pasted_cls is not getattr(attention, name), "the listing defined nothing"

    x = example_inputs() if rank == 2 else torch.stack((example_inputs(),) * 2)
    torch.manual_seed(seed)
    pasted = pasted_cls(*args)
    package = getattr(attention, name)(*args)
    package.load_state_dict(pasted.state_dict())
    with torch.no_grad():
        out = pasted(x)
        first = out[0] if rank == 2 else out[0, 0]
        torch.testing.assert_close(
            first, torch.tensor(first_row), rtol=0, atol=1e-4, msg="not the chapter's"
        )
        torch.testing.assert_close(out, package(x), rtol=0, atol=0)
