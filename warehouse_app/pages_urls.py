"""Public directory pages under /warehouses/."""
urlpatterns = []
