Feature: The bot speaks the user's language, numbers and all
  The bot talks English or Russian, as the user's Telegram does. Every number takes the word
  its count asks for: 1 copy, 2 copies; 1 копия, 2 копии, 5 копий; 1 монета, 4 монеты, 5 монет.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 1      | 1              |
      | 2      | 2              |
      | 5      | 1              |
    And the user holds 50 coins

  Scenario Outline: An English-speaking user orders <copies> and is told so in English
    Given the user's Telegram speaks English
    When the user sends a video and chooses <copies> from the offered numbers of copies
    Then the user is shown "<quote>"
    When the user presses the confirm button
    Then the user is shown "<accepted>"
    When the copies are made and delivered
    Then the user is shown "<done>"

    Examples:
      | copies | quote                               | accepted                                 | done                                                             |
      | 1      | 1 copy at 1 coin each: 1 coin.      | Order accepted: 1 copy, 1 coin reserved. | Your copy is ready: 1 coin, charged as it arrived.               |
      | 2      | 2 copies at 2 coins each: 4 coins.  | Order accepted: 2 copies, 4 coins reserved. | All 2 copies are ready: 4 coins, each copy charged as it arrives. |
      | 5      | 5 copies at 1 coin each: 5 coins.   | Order accepted: 5 copies, 5 coins reserved. | All 5 copies are ready: 5 coins, each copy charged as it arrives. |

  Scenario Outline: A Russian-speaking user orders <copies> and is told so in Russian
    Given the user's Telegram speaks Russian
    When the user sends a video and chooses <copies> from the offered numbers of copies
    Then the user is shown "<quote>"
    When the user presses the confirm button
    Then the user is shown "<accepted>"
    When the copies are made and delivered
    Then the user is shown "<done>"

    Examples:
      | copies | quote                                   | accepted                                  | done                                                                |
      | 1      | 1 копия по 1 монете: всего 1 монета.    | Заказ принят: 1 копия, в резерве 1 монета. | Готова 1 копия: 1 монета, каждая копия списывается при получении.   |
      | 2      | 2 копии по 2 монеты: всего 4 монеты.    | Заказ принят: 2 копии, в резерве 4 монеты. | Готовы 2 копии: 4 монеты, каждая копия списывается при получении.   |
      | 5      | 5 копий по 1 монете: всего 5 монет.     | Заказ принят: 5 копий, в резерве 5 монет.  | Готово 5 копий: 5 монет, каждая копия списывается при получении.    |

  Scenario: A user whose Telegram speaks neither is told in English
    Given the user's Telegram speaks German
    When the user sends a video and chooses 2 from the offered numbers of copies
    Then the user is shown "2 copies at 2 coins each: 4 coins."
