mod highlight_lazy;
mod markdown;
