"""Text primitives every layer above may use: the one normalization and duplicate detection
(:mod:`.normalize`) and keyword matching (:mod:`.keywords`). Nothing here imports a feature
package."""
