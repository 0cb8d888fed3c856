"""What one search is: :class:`SearchSpec`, resolved once from the flags, the recipe's
``search:`` section and the defaults. The target, judges, attacker, system prompt, policy,
prices and budget caps are an attack's (:class:`~aart.redteam.spec.AttackSpec`), resolved the
way `aart attack` resolves them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import UsageError
from ..redteam.spec import AttackSpec
from ..redteam.strategies import parse_strategy
from .mutate import INJECTION_MUTATIONS, MUTATIONS, PLAIN_MUTATIONS

#: every mutation a search knows (the attacker's rewrites and "dataset"; the plain requests'
#: frames apply to plain datasets only, the injection ones to injection datasets only)
ALL_MUTATIONS = [*MUTATIONS, *PLAIN_MUTATIONS, *INJECTION_MUTATIONS]

#: the defaults of the ``search:`` section's settings
DEFAULTS: dict[str, Any] = {
    "pick": "uniform",
    "seed": 0,
    "parallel": 4,
    "strategies": ["identity"],
}
#: strategies that spend several target queries per prompt: searches of their own
MULTI_QUERY = ("pair", "crescendo")


class SearchSpec(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    dataset: str
    attack: AttackSpec
    budget: int
    axes: list[str] = []
    strategies: list[str] = ["identity"]
    pick: str = "uniform"
    mutations: list[str] = list(ALL_MUTATIONS)
    seed: int = 0
    parallel: int = 4
    #: the recipe whose dimensions (their verify: methods and aliases) check the candidates
    recipe: str | None = None
    #: also run the static baselines (the dataset unchanged, and PAIR) at the same budget
    compare: bool = False

    @classmethod
    def resolve(
        cls,
        dataset: str | Path,
        *,
        budget: int | None = None,
        axes: list[str] | None = None,
        strategies: list[str] | None = None,
        pick: str | None = None,
        mutations: list[str] | None = None,
        seed: int | None = None,
        parallel: int | None = None,
        attacker: str | None = None,
        compare: bool = False,
        **attack: Any,
    ) -> SearchSpec:
        """Each setting from its argument (None: not given), else the recipe's ``search:``
        section, else the default; the attack's settings as ``AttackSpec.resolve``."""
        from ..store.rundir import recipe_at

        ds = Path(dataset)
        recipe = attack.get("recipe")
        if recipe is None and (ds.parent / "recipe.yaml").exists():
            recipe = ds.parent / "recipe.yaml"
        section = recipe_at(recipe).recipe.search if recipe is not None else None

        def pick_(flag: Any, name: str) -> Any:
            if flag is not None and flag != []:
                return flag
            got = getattr(section, name, None) if section is not None else None
            if got is not None and got != []:
                return got
            return DEFAULTS.get(name)

        chosen = [s.strip() for s in pick_(strategies, "strategies") if s.strip()]
        for s in chosen:
            st = parse_strategy(s)  # an unknown one names the fix
            if st.name in MULTI_QUERY:
                raise UsageError(
                    f"{st.name} spends several target queries per prompt, a search of its "
                    "own: leave it out of --strategies (--compare runs PAIR)"
                )
        chosen = list(dict.fromkeys(parse_strategy(s).label for s in chosen))
        muts = list(pick_(mutations, "mutations") or ALL_MUTATIONS)
        unknown = [m for m in muts if m not in ALL_MUTATIONS]
        if unknown:
            raise UsageError(
                f"unknown mutation {unknown[0]!r}; choose from: {', '.join(ALL_MUTATIONS)}"
            )
        n = pick_(budget, "budget")
        if n is None:
            raise UsageError(
                "no budget: give --budget N (target queries), or search.budget in the recipe"
            )
        if n < 1:
            raise UsageError(f"--budget {n}: a search needs at least one target query")
        chosen_attacker = attacker or (section.attacker if section is not None else None)
        # the rewrite strategies need the attacker in the attack spec too
        spec = AttackSpec.resolve(
            dataset,
            attacker=chosen_attacker,
            strategies=[s for s in chosen if s != "identity"],
            **attack,
        )
        if spec.attacker is None:
            raise UsageError(
                "a search mutates prompts with an attacker model: give --attacker "
                "PROVIDER/MODEL (or search.attacker / attack.attacker in the recipe)"
            )
        if spec.batch is not None:
            raise UsageError(
                "--batch does not fit a search: each generation waits on the last one's "
                "verdicts; leave --batch out"
            )
        return cls(
            dataset=str(dataset),
            attack=spec,
            budget=int(n),
            axes=list(axes or (section.axes if section is not None else []) or []),
            strategies=chosen,
            pick=str(pick_(pick, "pick")),
            mutations=muts,
            seed=int(pick_(seed, "seed")),
            parallel=int(pick_(parallel, "parallel")),
            recipe=str(recipe) if recipe is not None else None,
            compare=compare,
        )

    def settings(self, dataset_hash: str) -> dict[str, Any]:
        """What a resumed search must share with the one in its directory: everything that
        decides the iteration order and the verdicts (the budget may grow: the same search
        goes on)."""
        return {
            "dataset": dataset_hash,
            "attack": self.attack.settings(),
            "axes": self.axes,
            "strategies": self.strategies,
            "pick": self.pick,
            "mutations": self.mutations,
            "seed": self.seed,
            "parallel": self.parallel,
        }
