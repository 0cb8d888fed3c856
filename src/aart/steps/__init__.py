"""The three AART steps: define (enumerate values), scope (data mix), generate (queries)."""
