"""The quota wing (pure): ``consumption`` (how quota consumption is computed, its ordered
gates and reason codes) and ``intervals`` (quota measurement intervals).
"""
