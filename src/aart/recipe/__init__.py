"""Recipes: the YAML file that makes an evaluation's requirements explicit."""

from .loader import builtin_recipes, load_recipe, resolve_recipe_path
from .located import LoadedRecipe
from .models import Dimension, Recipe, Value

__all__ = [
    "Dimension",
    "LoadedRecipe",
    "Recipe",
    "Value",
    "builtin_recipes",
    "load_recipe",
    "resolve_recipe_path",
]
