from datetime import datetime

from django import forms

from shop.documents import ORDER_STATES


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=500,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Give a reason: it is kept in the audit trail."},
    )


class OrderFilterForm(forms.Form):
    q = forms.CharField(
        required=False, max_length=120, label="Order number, email or ticket code"
    )
    state = forms.ChoiceField(
        required=False,
        choices=[("", "Any state")] + [(s, s.replace("_", " ")) for s in ORDER_STATES],
    )
    kind = forms.ChoiceField(
        required=False,
        label="Holding",
        choices=[("", "Tickets or goods"), ("tickets", "Tickets"), ("goods", "Goods")],
    )
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    after = forms.RegexField(
        required=False, regex=r"^[0-9T:+.\- ]+\|[0-9a-f]{24}$", widget=forms.HiddenInput
    )

    def clean_after(self):
        value = self.cleaned_data.get("after") or ""
        if value:
            try:
                datetime.fromisoformat(value.partition("|")[0])
            except ValueError:
                raise forms.ValidationError("That page link is broken.") from None
        return value

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError("The start date is after the end date.")
        return data
