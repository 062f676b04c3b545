"""OTP routes under /api/v1/."""
urlpatterns = []
