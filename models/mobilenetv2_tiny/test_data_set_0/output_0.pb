
BprobabilitiesJ(-†:™‰A?aW>%/S=/;Œ˜M=¿G›:¸‹µ;¡TŒ:Ò»7