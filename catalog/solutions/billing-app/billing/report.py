"""Monthly totals across customers."""

from billing import calc as calc_module


def monthly_total(invoices):
    """``invoices`` maps customer -> list of (qty, price) items."""
    return round(sum(calc_module.compute_total(items) for items in invoices.values()), 2)


def largest_customer(invoices):
    return max(invoices, key=lambda name: calc_module.compute_total(invoices[name]))
