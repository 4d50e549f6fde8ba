"""Render one invoice as text."""

from billing.calc import compute_total


def render_invoice(customer, items, tax_rate=0.0):
    total = compute_total(items, tax_rate)
    lines = [f"Invoice for {customer}"]
    for qty, price in items:
        lines.append(f"  {qty} x {price:.2f}")
    lines.append(f"Total: {total:.2f}")
    return "\n".join(lines)
